"""Who may call what, and what is kept from whom: roles and tokens (``auth``), TLS (``tls``),
the interceptor every gRPC server applies (``guard``), the session key that signs internal calls
(``sessionkey``), secrets hidden in answers and logs (``secrets``), config provider references
(``references``), and how Kafka clients authenticate (``kafkasecurity``, ``kafkalogin``)."""
