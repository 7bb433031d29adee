"""BERT's input embedding layer and the mathematics around it: tokenizers, checkpoints, training, PCA, measures."""
