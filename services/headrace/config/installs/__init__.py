"""Java plugins installed for the whole cluster: the commands (``installs``) and their REST
calls (``rest``); the gRPC calls are ``ConfigService``'s."""
