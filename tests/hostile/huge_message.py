# One 60 MB message (a header of that size): decoding it took the grading worker, which
# runs under the memory cap too, past that cap (red team: MemoryError, status error). A
# frame past what the grader takes (kernel_messages.max_message_bytes) is dropped by ZMQ.
kernel = get_ipython().kernel  # noqa: F821 - a kernel cell
header = kernel.session.msg_header("stream")
header["username"] = "A" * (60 << 20)
kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": "huge\n"},
                    parent=kernel.get_parent(), header=header)
del header
