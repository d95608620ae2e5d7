"""What the tests share besides their fixtures (tests/conftest.py keeps those and the hooks):

- ``paths``: the repository, the ELI mirror and the eval questions in ../shared, and reading the mirror;
- ``database``: the run's embedded server, databases made for a test or a session, locks between workers;
- ``corpus``: mirror acts parsed once, stored or ingested as the product stores them, embedded in bulk;
- ``cli``: running `pipeline` as a user would (``run_cli``);
- ``servers``: the one life cycle of the loopback stand-in servers (the ELI mirror, the models).
"""
