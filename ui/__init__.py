"""The Gradio page, split by panel; see `ui.page` for how the parts fit together."""
