"""The pure domain: every decision as values, no I/O. Rooms by subject on floors, each package's
docstring saying what it decides, each floor importing only the floors below it (a layers
contract in pyproject.toml), from the top:

    attestation | isolation | setup   what verify finds; the namespaces and sandboxes that
                                      enforce a grant; doctor's judgement and install-agents
    configuration                     what configures a run and the machine
    evidence                          what a run leaves and says
    run                               how the rounds go and end
    boundary                          what a grant lets a worker see and do
    gitview                           what the host asks Git
    ground                            the shared vocabulary: codes, refusals and error links,
                                      record fields, backends, run ids, layout, path facts, texts
"""
