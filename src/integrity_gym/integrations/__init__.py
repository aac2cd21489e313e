"""Bridges to other frameworks, each an optional extra imported only when used.

``integrity_gym.integrations.verifiers``: the environments as native verifiers v1 tasksets
(extra ``verifiers``; docs/verifiers.md).
"""
