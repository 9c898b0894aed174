"""A finished run: what each rank measured, the timeline, the metrics, the JSON form."""
