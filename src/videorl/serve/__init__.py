"""videorl.serve: `videorl serve`, a checkpoint behind an OpenAI/vLLM-compatible API.

    videorl serve --model CKPT [--port 8000] [--media-root DIR] [--api-key KEY]

Needs the `serve` extra (FastAPI, uvicorn, pydantic): `pip install 'videorl[serve]'`; the
command says so when it is missing. The checkpoint is served with the settings of the run
that wrote it (`inference.RunSettings`: video sampling, think mode, template variables).

Modules: `commands` and `options` (the CLI command, typer only), `app` (routes and the
uvicorn thread), `chat` (request -> prompt -> answer), `engine` (batched generation),
`media` and `schema` (what a request may hold), `limits`, `protocol`.

Nothing is imported here, so that `videorl --help` stays fast.
"""
