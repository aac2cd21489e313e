"""GRPO training on the environments (``igym train``; needs the ``train`` extra, docs/training.md).

``grpo`` trains a causal LM with TRL's ``GRPOTrainer`` on a single-step task, the environment's
own reward on train-partition items, and evaluates it before and after on the eval partition with
the benchmark runner; ``model`` loads the bundled SmolLM2 weights as a trainable model;
``endpoint`` serves a model in memory as an OpenAI-compatible endpoint for the ``llm`` agent.
A training folder's files are named in ``report.training``, which reads them for ``igym report``
and the curves (``report.curves``) without importing this package. torch,
transformers and TRL are imported only inside these modules, never by the rest of the package,
and reading a training folder imports none of them.
"""
