"""HTTP serving pieces shared by affectgym's two servers, ``affectgym serve`` and the local model server.

:mod:`~affectgym.serving.asgi` holds the ASGI helpers (bounded body reads, refusals) and
:mod:`~affectgym.serving.protocols` uvicorn's connection protocols with the clocks uvicorn lacks.
"""
