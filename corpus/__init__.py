"""Text normalisation, tokenizers (character; jieba words), counting, and the shipped count tables."""
