"""Kubernetes semantics on the deterministic runtime: apiserver, informers, work queues, GC.

Layering: ``harness.kube`` builds only on ``harness.sim`` (actors, virtual time,
choices). Every request and every watch delivery is one scheduled action, so
the races of client-go and the apiserver come from scheduling itself.
The implementation lives in private modules; this is the public surface.
"""

from . import _http as _http  # the HTTP API: importing it installs what APIServer.transport() makes
from ._apiserver import APIServer as APIServer
from ._apiserver import apiservers_of as apiservers_of
from ._conditions import find_status_condition as find_status_condition
from ._conditions import is_status_condition_true as is_status_condition_true
from ._conditions import remove_status_condition as remove_status_condition
from ._conditions import set_status_condition as set_status_condition
from ._controller import Controller as Controller
from ._controller import Result as Result
from ._errors import AlreadyExists as AlreadyExists
from ._errors import ApiError as ApiError
from ._errors import Conflict as Conflict
from ._errors import Forbidden as Forbidden
from ._errors import Gone as Gone
from ._errors import Invalid as Invalid
from ._errors import NotFound as NotFound
from ._errors import ProcessCrashed as ProcessCrashed
from ._errors import ServerTimeout as ServerTimeout
from ._errors import Timeout as Timeout
from ._errors import TooLargeResourceVersion as TooLargeResourceVersion
from ._events import CreateEvent as CreateEvent
from ._events import DeleteEvent as DeleteEvent
from ._events import EnqueueRequestForObject as EnqueueRequestForObject
from ._events import EnqueueRequestForOwner as EnqueueRequestForOwner
from ._events import EnqueueRequestsFromMapFunc as EnqueueRequestsFromMapFunc
from ._events import EventHandler as EventHandler
from ._events import Funcs as Funcs
from ._events import GenerationChangedPredicate as GenerationChangedPredicate
from ._events import GenericEvent as GenericEvent
from ._events import Predicate as Predicate
from ._events import ResourceVersionChangedPredicate as ResourceVersionChangedPredicate
from ._events import UpdateEvent as UpdateEvent
from ._events import watch as watch
from ._expectations import CONTROLLER_REVISION_HASH_LABEL as CONTROLLER_REVISION_HASH_LABEL
from ._expectations import EXPECTATIONS_TIMEOUT as EXPECTATIONS_TIMEOUT
from ._expectations import KRUISE_EXPECTATION_TIMEOUT as KRUISE_EXPECTATION_TIMEOUT
from ._expectations import ControllerExpectations as ControllerExpectations
from ._expectations import ResourceVersionExpectation as ResourceVersionExpectation
from ._expectations import ScaleExpectations as ScaleExpectations
from ._expectations import UpdateExpectations as UpdateExpectations
from ._gc import GarbageCollector as GarbageCollector
from ._http._cluster import start_cluster as start_cluster
from ._informer import Informer as Informer
from ._informer import informers_of as informers_of
from ._kubelet import Kubelet as Kubelet
from ._lister import DeletedFinalStateUnknown as DeletedFinalStateUnknown
from ._lister import Lister as Lister
from ._merge import merge_patch as merge_patch
from ._objects import BUILTIN_KINDS as BUILTIN_KINDS
from ._objects import KubeObject as KubeObject
from ._objects import OwnerReference as OwnerReference
from ._objects import controller_ref as controller_ref
from ._objects import copy_json as copy_json
from ._process import ControllerProcess as ControllerProcess
from ._ratelimit import BucketRateLimiter as BucketRateLimiter
from ._ratelimit import (
    ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
)
from ._ratelimit import MaxOfRateLimiter as MaxOfRateLimiter
from ._ratelimit import RateLimiter as RateLimiter
from ._ratelimit import (
    default_controller_rate_limiter as default_controller_rate_limiter,
)
from ._registry import FOREGROUND_FINALIZER as FOREGROUND_FINALIZER
from ._registry import ORPHAN_FINALIZER as ORPHAN_FINALIZER
from ._retry import DEFAULT_BACKOFF as DEFAULT_BACKOFF
from ._retry import Backoff as Backoff
from ._retry import retry_on_conflict as retry_on_conflict
from ._revisions import ADDED as ADDED
from ._revisions import DELETED as DELETED
from ._revisions import MODIFIED as MODIFIED
from ._revisions import WatchEvent as WatchEvent
from ._workqueue import ShutDown as ShutDown
from ._workqueue import WorkQueue as WorkQueue

__all__ = [
    "ADDED", "BUILTIN_KINDS", "CONTROLLER_REVISION_HASH_LABEL", "DEFAULT_BACKOFF", "DELETED", "EXPECTATIONS_TIMEOUT",
    "FOREGROUND_FINALIZER", "KRUISE_EXPECTATION_TIMEOUT", "MODIFIED", "ORPHAN_FINALIZER", "APIServer",
    "AlreadyExists", "ApiError", "Backoff", "BucketRateLimiter", "Conflict", "Controller", "ControllerExpectations",
    "ControllerProcess", "DeletedFinalStateUnknown", "Forbidden", "GarbageCollector", "Informer",
    "Invalid", "Kubelet",
    "ItemExponentialFailureRateLimiter", "KubeObject", "Lister", "MaxOfRateLimiter", "NotFound", "OwnerReference",
    "ProcessCrashed", "RateLimiter", "ResourceVersionExpectation", "Result", "ScaleExpectations", "ServerTimeout",
    "Gone", "ShutDown", "Timeout", "TooLargeResourceVersion", "UpdateExpectations", "WatchEvent", "WorkQueue",
    "controller_ref", "copy_json", "default_controller_rate_limiter", "merge_patch", "retry_on_conflict",
    "apiservers_of", "informers_of", "start_cluster",
    # status conditions with apimachinery's semantics (_conditions.py)
    "find_status_condition", "is_status_condition_true", "remove_status_condition", "set_status_condition",
    # controller-runtime's event path (_events.py)
    "CreateEvent", "DeleteEvent", "EnqueueRequestForObject", "EnqueueRequestForOwner", "EnqueueRequestsFromMapFunc",
    "EventHandler", "Funcs", "GenerationChangedPredicate", "GenericEvent", "Predicate",
    "ResourceVersionChangedPredicate", "UpdateEvent", "watch",
]
