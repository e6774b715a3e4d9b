"""llama.cpp's server in-process through the xllamacpp wheel; serves until killed.

The server `saki --local` starts (embedded in the binary), and the one the scripts under
scripts/ start, so that what they measure is what saki runs:

    python xllamacpp_server.py MODEL PORT CTX ALIAS [--batch N] [--temp T] [--template FILE]
                               [--slots N]

One slot unless --slots says more; several slots share one unified KV cache of CTX
tokens, as llama-server's own default (four slots) does. Without --temp, sampling stays the server's stock default (what a client sends
decides it); saki passes --temp 0.
"""
import argparse
import signal

import xllamacpp

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("port", type=int)
ap.add_argument("ctx", type=int)
ap.add_argument("alias")
ap.add_argument("--batch", type=int)
ap.add_argument("--temp", type=float)
ap.add_argument("--template")
ap.add_argument("--slots", type=int, default=1)
a = ap.parse_args()

p = xllamacpp.CommonParams()
p.model.path = a.model
p.port = a.port
p.n_ctx = a.ctx
p.use_jinja = True
p.endpoint_props = True
try:
    p.model_alias = {a.alias}  # a set of names in this xllamacpp
except TypeError:
    p.model_alias = a.alias
p.n_parallel = a.slots
p.kv_unified = a.slots > 1
if a.batch:
    p.n_batch = p.n_ubatch = a.batch
if a.temp is not None:
    p.sampling.temp = a.temp
if a.template:
    with open(a.template) as f:
        p.chat_template = f.read()
server = xllamacpp.Server(p)
print("listening", server.listening_address, flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
