"""What a page shows, as data: the options and their limits, the view's fields, a link, the tour."""
