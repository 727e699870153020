"""Kubernetes knowledge shared by the functions, the runner and export: object names and scopes, pod
templates, a Job's hash, run identity and triggers, depends-on references, names as kustomize leaves
them, the step layout of a rendered stream and its reading as cluster objects. Pure, except
manifest_files.py (the one reader of ``-f FILE|DIR|-``). Empty on purpose: a function's start imports only
the modules it uses."""
