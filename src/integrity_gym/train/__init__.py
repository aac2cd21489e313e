"""GRPO training on the environments (``igym train``; needs the ``train`` extra, docs/training.md).

``grpo`` trains a causal LM with TRL's ``GRPOTrainer`` on a single-step task, the environment's
own reward on train-partition items, and evaluates it before and after on the eval partition with
the benchmark runner; ``model`` loads the bundled SmolLM2 weights as a trainable model;
``endpoint`` serves a model in memory as an OpenAI-compatible endpoint for the ``llm`` agent;
``curves`` reads the per-step log and draws the training curves; ``report`` turns a training
folder (its files are named in ``layout``) into a section of ``igym report``. torch,
transformers and TRL are imported only inside these modules, never by the rest of the package,
and reading a training folder imports none of them.
"""
