"""The one HTTP stack of krmfn: the runner's requests to the API server and set-image's to registries.

An HTTP/1.1 client over the standard library's sockets and TLS, written for what krmfn needs and no more
(bench/http_stacks.py compares it with http.client, httpx and httpx2):

    ceilings.py   every kind of request's byte ceiling and timeouts, in one table
    budget.py     the time a request may take: its own total and idle timeouts, the run's deadline, a stop
                  asked by a signal (``Budget``), checked before every wait on the network
    wire.py       a request, and the pool of connections to one origin it goes over
    answers.py    an answer: headers under their ceilings, a body read once (whole, its start, lines)
    sockets.py    a connection: connecting, TLS, sending and reading, each wait asking the ``Timer``
    errors.py     what can go wrong, one type per cause, each a one-line message quoting no secret
    urls.py       every URL krmfn prints goes through ``redact``
    addresses.py  address classes (loopback, private, public) for the rule on registry hops
    headers.py    linear parsers for the headers registries send (``Link``, ``WWW-Authenticate``)
    proxies.py    ``HTTPS_PROXY``/``NO_PROXY`` for registry requests

Every answer is read with a byte ceiling and a deadline for the whole request (not per read), and every
wait on a socket is cut into ticks so a signal or the run's deadline ends a request the server trickles.
"""
