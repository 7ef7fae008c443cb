"""What configures a run and the machine it runs on: the worker configuration, the model map and
programs, the request, program versions and discovery, doctor's judgement, the machine's
endpoints and resources, the prerequisites, the resource limits, and what init and install-
agents write."""
