"""Human output (``--format pretty``): the only code that imports Rich."""
