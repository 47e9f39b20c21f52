"""The web console, served by the config service under ``/ui/`` on its REST port.

The page is static (``static/``: HTML, CSS and one script, no build and no network); it reads
and acts through the REST API itself, so an action means and refuses exactly what the API does.
What the API has no call for comes from here: the connectors' board as one document, kept live
over server-sent events (``board``, ``app``), each connector's history of states (``history``),
sinks' consumer lag (``lag``), and the coordinator's generations (``cluster``). A browser proves
its role with the token it gave the login form, kept in a cookie the page cannot read
(``session``).
"""
