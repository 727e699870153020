"""kpt's side of a package, as ``krmfn render`` and the ``render`` function need it: the files read and
written as ``kpt fn render`` reads and writes them (opened through packagefs.py), kpt's bookkeeping
annotations, the layout kpt writes, the key order kyaml keeps, and a pipeline of krmfn functions run
in-process over one ResourceList."""
