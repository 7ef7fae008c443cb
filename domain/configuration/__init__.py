"""What configures a run and the machine it runs on: the worker configuration, the model map and
programs, the request, program versions and discovery, the machine's endpoints and resources,
the resource limits, the credentials' origins (`CredentialSpec`), where the signing key lies, the
backend profile, and what init writes."""
