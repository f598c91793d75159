# Messages the grader can read that make outputs no notebook may hold (red team: nbgrader
# could not write the graded notebook, and the row was 'error', retried on every run): a
# display whose value is a number, a stream of another name with a number for text, an
# execution count that is not one, text with a lone surrogate (UTF-8 cannot write it).
import json

from jupyter_client.jsonutil import json_default

kernel = get_ipython().kernel  # noqa: F821 - a kernel cell
packer = kernel.session.pack  # then ASCII JSON: a lone surrogate goes as "\\ud800"
kernel.session.pack = lambda obj: json.dumps(obj, default=json_default).encode()
for msg_type, content in [
        ("display_data", {"data": {"text/plain": "x\ud800", "weird/type": 5}, "metadata": {}}),
        ("stream", {"name": "stdin\x00", "text": 12345}),
        ("execute_result", {"data": {"text/plain": "1"}, "metadata": {}, "execution_count": "NaN"}),
        ("execute_input", {"code": "", "execution_count": "NaN"}),
        ("stream", {"name": "stdout", "text": "lone \udfff surrogate\n"})]:
    kernel.session.send(kernel.iopub_socket, msg_type, content, parent=kernel.get_parent())
kernel.session.pack = packer
