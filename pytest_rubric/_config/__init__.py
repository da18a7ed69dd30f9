"""Options and settings: the one table of flags and ini keys, the settings read from it,
and the registry of output files."""
