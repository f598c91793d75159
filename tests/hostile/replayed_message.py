# One signed message sent twice on the kernel's IOPub socket: jupyter_client refuses the
# second ("Duplicate Signature", a ValueError), which ended grading with the grader's own
# status, 'error', retried on every run.
kernel = get_ipython().kernel  # noqa: F821 - a kernel cell
frames = kernel.session.serialize(kernel.session.msg(
    "stream", {"name": "stdout", "text": "twice\n"}, parent=kernel.get_parent()))
for _ in range(2):
    kernel.iopub_socket.send_multipart(frames)
