"""Distributed tuning and find on Dask (the optional extra ``distributed``): many devices and machines
fill one perf DB. Nothing in miopy's core imports this package."""
from .client import Report, cluster, run, tune_jobs, write
from .jobs import FIND, TUNE, Job, JobResult, PerfRow

__all__ = ["FIND", "TUNE", "Job", "JobResult", "PerfRow", "Report", "cluster", "run", "tune_jobs", "write"]
