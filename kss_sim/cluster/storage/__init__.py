"""The objects held: the store and its verbs, the committer, the change log, the SQL repository, shared values."""
