# The gangplank extender image: `docker build -t gangplank .`
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
# The package alone, no extras: tests/test_installed_package.py copies the same files, runs this
# same `pip install .` into a fresh venv and starts `gangplank serve` from it. Keep the two alike.
RUN pip install . && rm -rf /src
USER 65532:65532
ENTRYPOINT ["gangplank"]
CMD ["serve", "--in-cluster"]
