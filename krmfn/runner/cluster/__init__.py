"""The cluster edge: the `Api` protocol (api.py) and its HTTP implementation (kube.py) over krmfn.net, the
kubeconfig.
"""
