"""The models of `django_smoke.py`."""
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100, db_index=True)
    email = models.EmailField(unique=True)
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "djapp"


class Book(models.Model):
    title = models.CharField(max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    pages = models.IntegerField(default=0)
    price = models.DecimalField(max_digits=8, decimal_places=2, null=True)
    meta = models.JSONField(default=dict)

    class Meta:
        app_label = "djapp"
