"""Streamlit helpers of the dashboard (the only package besides pages/ and app.py that imports streamlit)."""
