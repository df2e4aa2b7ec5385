"""Small ASGI apps that integration tests serve from separate uvicorn processes."""
