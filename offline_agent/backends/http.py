"""The http backend: a model server behind the Backend protocol (filled in by the next commit)."""

SERVER_KINDS = ("llama-server", "llama-cpp-python", "vllm", "sglang")
