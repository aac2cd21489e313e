"""Clients for a running integrity-gym server, with the interface of an in-process environment."""

from integrity_gym.client.client import AsyncRemoteEnv, RemoteEnv
from integrity_gym.client.protocol import (
    AdminTokenError,
    EpisodeNotDoneError,
    RemoteError,
    RemoteValidationError,
    ServerCapacityError,
    SessionLostError,
)
from integrity_gym.client.retries import RetryPolicy

__all__ = [
    "AdminTokenError",
    "AsyncRemoteEnv",
    "EpisodeNotDoneError",
    "RemoteEnv",
    "RemoteError",
    "RemoteValidationError",
    "RetryPolicy",
    "ServerCapacityError",
    "SessionLostError",
]
