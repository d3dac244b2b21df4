"""The torch backend: a compact Llama 3 (model), its weight formats and the measured choice of kernels, checkpoints
and GGUF files, the speculative loop on tensors, the neural pair's samplers and the bench. Nothing outside this
package in models/ imports torch."""
