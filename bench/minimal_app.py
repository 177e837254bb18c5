"""The reference app of the benchmarks: one button, one trivial endpoint (``/trivial``).

``bench_cold_start.py`` times its start; ``bench_endpoints.py`` times a call of ``/trivial``, Gradio's
own round trip, against every instant endpoint of the app.
"""
import gradio as gr

with gr.Blocks() as demo:
    out = gr.Textbox()
    gr.Button("Go").click(lambda: "hello", None, out, api_name="trivial")

if __name__ == "__main__":
    demo.launch()
