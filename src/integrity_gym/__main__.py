"""``python -m integrity_gym`` runs the ``igym`` command line."""

from integrity_gym.cli import main

main()
