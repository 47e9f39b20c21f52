"""The source path: ``poll`` -> convert -> produce in a transaction -> store offsets -> commit
(``loop``), with its batches (``produce``), transactions (``transactions``) and their
boundaries (``boundaries``, pure)."""
