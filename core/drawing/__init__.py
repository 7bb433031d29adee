"""From points to what a person sees: figures, label wishes, charts, the wire format, side views, exports, scripts."""
