"""What pages draw: charts, result views, the course's predictions and checks, lesson extras."""
