# The gangplank extender image: `docker build -t gangplank .`
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install . && rm -rf /src
USER 65532:65532
ENTRYPOINT ["gangplank"]
CMD ["serve", "--in-cluster"]
