"""`core.embedding.BertEmbedding`: the layer's documented address, kept stable for scripts and
readers beside the source document; its code lives in `core.model.embedding`."""

from core.model.embedding import BertEmbedding, PatchedEmbedding

__all__ = ["BertEmbedding", "PatchedEmbedding"]
