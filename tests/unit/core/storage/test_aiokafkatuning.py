"""What headrace changes of aiokafka's behaviour still has something to change."""

from __future__ import annotations

import aiokafka.producer.sender as sender

from headrace.core.storage import aiokafkatuning


def test_a_transaction_after_a_commit_asks_again_within_milliseconds_not_twenty() -> None:
    # The global aiokafka's AddPartitionsToTxn handler reads for the first partition of a
    # transaction the broker still finishes the last one of: gone, the tuning would do nothing.
    assert isinstance(vars(sender).get("BACKOFF_OVERRIDE"), float)
    aiokafkatuning.tune()
    assert sender.BACKOFF_OVERRIDE == aiokafkatuning.CONCURRENT_TRANSACTIONS_BACKOFF_S < 0.005
