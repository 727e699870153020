"""The function SDK: what every krmfn function is written with. The runtime (``Function``: the pure
``process(text) -> (text, code)`` and the one stdin/stdout edge), ``ResourceList``, functionConfig parsing,
selectors, results, and the one argparse style and ``--help`` ending every command shares. ``from krmfn
import Function, ResourceList, Results, Selector, select`` is the public way in; this file stays empty so a
function's start imports only the modules it uses."""
