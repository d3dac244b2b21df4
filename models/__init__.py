"""N-gram models, the speculative sampler (the one exact rule), analytics, hardware model, torch backend."""
