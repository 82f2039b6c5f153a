"""Commands of this group are added by their issue; see cli.py."""
