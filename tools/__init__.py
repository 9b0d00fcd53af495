"""Developer tools of the project (generators, oracles); not shipped with the app."""
