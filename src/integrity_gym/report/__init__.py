"""``igym report``: benchmark runs and training runs as an HTML page, a Markdown section and PNG figures.

It reads what the other commands wrote, and imports nothing of the training code:

- ``inputs``: the command's arguments as run folders (read by ``bench.runs``) and training folders,
  the red team's results (``igym redteam --json``), ``--trace`` choices, and how runs are grouped;
- ``training``: an ``igym train --out`` folder read from its files (the trainer writes them under
  the names defined there), and the before/after table's cells;
- ``plots``: the figures, drawn with matplotlib (the ``report`` extra); ``curves``: the training
  curves; ``figures``: which figures a report has, drawn and captioned;
- ``page``: the self-contained HTML page (``write_report``); ``markdown``: the Markdown section and
  the README's results block (``write_markdown``, ``make results``); ``cells``: what both print alike.

Layers: ``core <- envs <- agents <- bench <- report``; ``train`` may import ``report``, never the other
way round (tests/test_layers.py).
"""
