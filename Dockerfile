# SUA Lab app on the embedded default, CPU only: docker build -t sua-lab . && docker run -p 7860:7860 sua-lab
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=7860 \
    NUMBA_CACHE_DIR=/tmp/numba MPLCONFIGDIR=/tmp/mpl
COPY requirements.txt .
# CPU wheels of the pinned torch come from PyTorch's CPU index; the rest from PyPI.
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
COPY . .
RUN pip install --no-cache-dir --no-deps -e . && useradd -m -u 1000 user && chown -R user /app
USER user
EXPOSE 7860
CMD ["python", "app.py"]
