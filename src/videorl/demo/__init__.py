"""The web demo: ask a video a question and see the answer on its timeline (`videorl demo`).

`examples` makes the bundled synthetic videos, `inference` asks the model, `views` and
`render` turn the answer into pictures, `app` is the gradio app.
"""
