"""The reference for the cold-start benchmark: a minimal one-button Gradio app."""
import gradio as gr

with gr.Blocks() as demo:
    out = gr.Textbox()
    gr.Button("Go").click(lambda: "hello", None, out)

if __name__ == "__main__":
    demo.launch()
