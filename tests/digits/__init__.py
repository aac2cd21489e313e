"""The toy environment as a plugin would ship it: this folder and one registry line.

``TASKS`` is what an ``integrity_gym.tasks`` entry point names (``digits = "tests.digits:TASKS"``);
``env.py`` holds the models, env, grader and agents' hooks, ``agents.py`` its heuristic and
``view.js`` its page in the playground and viewer (both declared in ``ToyEnv.extras``).
"""

from tests.digits.env import SPEC

TASKS = [SPEC]
