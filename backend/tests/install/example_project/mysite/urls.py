from django.contrib import admin
from django.urls import include, path

from shop import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("jobs-api/", include("jobs.urls")),
    path("shop/add/", views.enqueue_add),
    path("shop/results/<str:result_id>/", views.result),
]
