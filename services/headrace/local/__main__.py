"""``python -m headrace.local``: see ``headrace.local.commands``."""

from headrace.local.commands import local

if __name__ == "__main__":
    local(prog_name="python -m headrace.local")
