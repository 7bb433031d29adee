"""From sentences to points: the embedding run, the plane's basis, neighbours, search, and the scene drawn."""
