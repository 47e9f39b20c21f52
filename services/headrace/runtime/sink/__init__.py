"""The sink path: consume -> convert -> ``put`` -> ``pre_commit`` -> commit the group's offsets
(``loop``), with its pure parts: messages to records (``records``) and the commit bookkeeping
(``offsets``)."""
